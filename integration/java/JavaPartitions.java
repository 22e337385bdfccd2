// Reference partitioner check: produces each key with the real Java KafkaProducer and its DEFAULT
// partitioner (no partitioner config on purpose), printing the partition the broker acknowledged.
// Run as a single-file source program (no javac step):
//   java -cp 'LIBS/*' integration/java/JavaPartitions.java <bootstrap-servers> <topic>  < hex-keys
// stdin: one hex-encoded key per line (an empty line is the empty key); stdout: one partition per line.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaPartitions {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: JavaPartitions <bootstrap-servers> <topic>");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            String line;
            while ((line = in.readLine()) != null) {
                byte[] key = hex.parseHex(line.strip());
                // Synchronous send: the partition printed is the one the record really landed in.
                RecordMetadata md = producer.send(new ProducerRecord<>(args[1], key, key)).get();
                System.out.println(md.partition());
            }
            System.out.flush();
        }
    }
}
